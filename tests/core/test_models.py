"""trainlab.models: shapes, channels_last, norm choice, loss at initialisation."""

import math
from dataclasses import replace

import pytest
import torch

from trainlab.models import ModelConfig, build_model, count_parameters


@pytest.mark.device
@pytest.mark.parametrize("name", ["mlp", "cnn", "resnet", "vit"])
def test_logits_shape_and_channels_last_agree(name, device):
    torch.manual_seed(0)
    model = build_model(ModelConfig(name=name, width=16)).to(device).eval()
    x = torch.randn(4, 3, 32, 32, device=device)
    out = model(x)
    assert out.shape == (4, 10) and out.dtype == torch.float32
    model_cl = model.to(memory_format=torch.channels_last)
    torch.testing.assert_close(model_cl(x.contiguous(memory_format=torch.channels_last)), out, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", ["cnn", "resnet", "vit"])
def test_loss_at_init_is_ln_classes(name):
    # A zero-initialised head makes every class equally likely: loss = ln(10) exactly.
    model = build_model(ModelConfig(name=name, width=16))
    x, y = torch.randn(32, 3, 32, 32), torch.randint(0, 10, (32,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    assert loss.item() == pytest.approx(math.log(10), abs=1e-5)


def test_group_norm_has_no_batch_statistics():
    model = build_model(ModelConfig(name="cnn", norm="group"))
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    assert any(isinstance(m, torch.nn.GroupNorm) for m in model.modules())
    # Per-sample normalisation: a sample's output does not depend on the rest of its batch.
    x = torch.randn(8, 3, 32, 32)
    torch.testing.assert_close(model(x)[:2], model(x[:2]))


def test_sizes_grow_with_width_and_bad_names_are_rejected():
    assert count_parameters(build_model(ModelConfig(width=16))) < count_parameters(build_model(ModelConfig(width=32)))
    vit = ModelConfig(name="vit", width=32)
    assert count_parameters(build_model(vit)) < count_parameters(build_model(replace(vit, depth=2 * vit.depth)))
    with pytest.raises(ValueError, match="model 'deit' is not known"):
        build_model(ModelConfig(name="deit"))
    with pytest.raises(ValueError, match="norm 'layer' is not known"):
        build_model(ModelConfig(norm="layer"))
