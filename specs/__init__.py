"""Built-in spec files (hardware and model configurations), shipped inside the wheel."""
