"""Reports of roofline results: the JSON record format, baselines, compare rules, the terminal
summary, Markdown and charts.

No pytest here: the plugin and the command line both build on these modules, and they build on
the engine alone.
"""
