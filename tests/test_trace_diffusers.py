"""diffusers' models, traced unchanged on meta tensors from small configs: a text-conditioned
UNet (Stable Diffusion's block types), the KL autoencoder and a DiT.

Expected numbers: torch's ``FlopCounterMode`` over the same call, exactly, for the products
it counts (convolutions, matrix products, attention); no op of these runs may be unknown.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
diffusers = pytest.importorskip("diffusers")

import pytest_roofline as rl  # noqa: E402

#: Product ops FlopCounterMode counts, by the name the trace gives their kernels.
PRODUCTS = ("convolution", "mm", "addmm", "bmm", "baddbmm", "scaled_dot_product_attention")
STEP = torch.tensor([10], device="meta")


def _unet() -> tuple[object, tuple[object, ...], dict[str, object]]:
    model = diffusers.UNet2DConditionModel(
        sample_size=32, block_out_channels=(32, 64), layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"), cross_attention_dim=32,
        attention_head_dim=8, norm_num_groups=8)
    text = torch.empty(1, 8, 32, device="meta")
    return model, (torch.empty(1, 4, 32, 32, device="meta"), STEP, text), {}


def _vae() -> tuple[object, tuple[object, ...], dict[str, object]]:
    model = diffusers.AutoencoderKL(
        block_out_channels=(32, 64), down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=8)
    return model, (torch.empty(1, 3, 64, 64, device="meta"),), {}


def _dit() -> tuple[object, tuple[object, ...], dict[str, object]]:
    model = diffusers.DiTTransformer2DModel(
        num_attention_heads=2, attention_head_dim=16, in_channels=4, num_layers=2,
        sample_size=16, patch_size=2, num_embeds_ada_norm=10)
    labels = torch.tensor([1], device="meta")
    return model, (torch.empty(1, 4, 16, 16, device="meta"),), {
        "timestep": STEP, "class_labels": labels}


@pytest.mark.parametrize("build", [_unet, _vae, _dit], ids=["unet", "vae", "dit"])
def test_a_diffusers_model_traces_whole_and_counts_its_products_as_torch_does(build) -> None:
    from torch.utils.flop_counter import FlopCounterMode

    with torch.device("meta"):
        model, args, kwargs = build()
    model.eval()  # type: ignore[attr-defined]
    with torch.no_grad():
        traced = rl.trace(model, *args, **kwargs)
        with FlopCounterMode(display=False) as counter:
            model(*args, **kwargs)  # type: ignore[operator]
    assert not traced.unknown, dict(traced.unknown)
    products = sum(float(k.total_flops) for k in traced.kernels
                   if k.name.split(".")[-1] in PRODUCTS)
    assert products == counter.get_total_flops() > 0
