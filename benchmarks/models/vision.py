"""Vision models written here from their published designs:

* ``pytorch_unet``: U-Net (Ronneberger et al., 2015) as in milesial's
  Pytorch-UNet: double 3x3 convolutions with BatchNorm, bilinear upsampling
  (so the bottom has half the channels), skip connections padded to match
  odd sizes; 2 classes on 640x959 images in TorchBench.
* ``dcgan``: the DCGAN discriminator (Radford et al., 2015) of PyTorch's
  example, which TorchBench times, on 64x64 images.
* ``LearningToPaint``: the actor of "Learning to Paint" (Huang et al., 2019):
  a ResNet-18 over a 9-channel 128x128 state (canvas, target, step, coordinates)
  that outputs 65 stroke parameters in [0, 1].
* ``phlippe_resnet``, ``phlippe_densenet``: the CIFAR-10 ResNet and DenseNet of
  Phillip Lippe's UvA deep learning tutorial 5.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks.models.spec import ModelSpec, TensorSpec


def _conv_bn(c_in: int, c_out: int, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(c_out)]


# --------------------------------------------------------------------------
# U-Net


class DoubleConv(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, c_mid: int | None = None):
        c_mid = c_mid or c_out
        super().__init__(*_conv_bn(c_in, c_mid), nn.ReLU(inplace=True),
                         *_conv_bn(c_mid, c_out), nn.ReLU(inplace=True))


class Up(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.conv = DoubleConv(c_in, c_out, c_in // 2)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        x = self.up(x)
        # Odd sizes halve with rounding down: pad back to the skip's size.
        dy, dx = skip.size(2) - x.size(2), skip.size(3) - x.size(3)
        x = F.pad(x, [dx // 2, dx - dx // 2, dy // 2, dy - dy // 2])
        return self.conv(torch.cat([skip, x], dim=1))


class UNet(nn.Module):
    """``forward(images)``: (batch, 3, H, W) -> class logits (batch, classes, H, W)."""

    def __init__(self, channels: int = 3, classes: int = 2, width: int = 64):
        super().__init__()
        w = [width * 2**i for i in range(5)]  # 64 ... 1024
        self.inc = DoubleConv(channels, w[0])
        self.downs = nn.ModuleList(nn.Sequential(nn.MaxPool2d(2), DoubleConv(a, b))
                                   for a, b in zip(w[:3], w[1:4]))
        # Bilinear upsampling has no weights: the bottom keeps half the channels.
        self.downs.append(nn.Sequential(nn.MaxPool2d(2), DoubleConv(w[3], w[4] // 2)))
        self.ups = nn.ModuleList([Up(w[4], w[3] // 2), Up(w[3], w[2] // 2), Up(w[2], w[1] // 2),
                                  Up(w[1], w[0])])
        self.outc = nn.Conv2d(w[0], classes, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = [self.inc(x)]
        for down in self.downs:
            skips.append(down(skips[-1]))
        x = skips.pop()
        for up in self.ups:
            x = up(x, skips.pop())
        return self.outc(x)


def unet_model() -> ModelSpec:
    def spec(rows: int, columns: int, **config) -> ModelSpec:
        return ModelSpec("pytorch_unet", "vision", partial(UNet, **config),
                         inputs=(TensorSpec((3, rows, columns), low=0.0, high=1.0),))

    # Odd widths (959) exercise the padding of the skip connections.
    return replace(spec(640, 959), cpu=spec(64, 95), tiny=spec(32, 47, width=4))


# --------------------------------------------------------------------------
# DCGAN


class Discriminator(nn.Sequential):
    """(batch, 3, 64, 64) images -> probability of being real (batch, 1, 1, 1)."""

    def __init__(self, channels: int = 3, width: int = 64):
        w = [width * 2**i for i in range(4)]
        layers: list[nn.Module] = [nn.Conv2d(channels, w[0], 4, 2, 1, bias=False),
                                   nn.LeakyReLU(0.2, inplace=True)]
        for a, b in zip(w, w[1:]):
            layers += [nn.Conv2d(a, b, 4, 2, 1, bias=False), nn.BatchNorm2d(b),
                       nn.LeakyReLU(0.2, inplace=True)]
        layers += [nn.Conv2d(w[-1], 1, 4, 1, 0, bias=False), nn.Sigmoid()]
        super().__init__(*layers)
        for m in self.modules():  # DCGAN's initialisation
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, 0.0, 0.02)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.normal_(m.weight, 1.0, 0.02)
                nn.init.zeros_(m.bias)


def dcgan_model() -> ModelSpec:
    spec = ModelSpec("dcgan", "vision", Discriminator, inputs=(TensorSpec((3, 64, 64)),))
    return replace(spec, tiny=replace(spec, build=partial(Discriminator, width=4)))


# --------------------------------------------------------------------------
# LearningToPaint


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int):
        super().__init__()
        self.body = nn.Sequential(*_conv_bn(c_in, c_out, stride), nn.ReLU(),
                                  *_conv_bn(c_out, c_out))
        self.shortcut = nn.Sequential()
        if stride != 1 or c_in != c_out:
            self.shortcut = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.body(x) + self.shortcut(x))


class PaintActor(nn.Module):
    """(batch, 9, 128, 128) state -> 65 stroke parameters in [0, 1]: a ResNet-18
    whose stem and every stage halve the resolution."""

    def __init__(self, inputs: int = 9, outputs: int = 65, width: int = 64):
        super().__init__()
        self.stem = nn.Sequential(*_conv_bn(inputs, width, 2), nn.ReLU())
        widths = [width * 2**i for i in range(4)]
        stages, c_in = [], width
        for c_out in widths:
            stages += [BasicBlock(c_in, c_out, 2), BasicBlock(c_out, c_out, 1)]
            c_in = c_out
        self.stages = nn.Sequential(*stages)
        self.fc = nn.Linear(widths[-1], outputs)

    def forward(self, state: torch.Tensor) -> torch.Tensor:
        x = self.stages(self.stem(state))
        x = F.avg_pool2d(x, 4).flatten(1)
        return torch.sigmoid(self.fc(x))


def learning_to_paint_model() -> ModelSpec:
    state = TensorSpec((9, 128, 128), low=0.0, high=1.0)
    spec = ModelSpec("LearningToPaint", "vision", PaintActor, inputs=(state,))
    return replace(spec, tiny=replace(spec, build=partial(PaintActor, width=4)))


# --------------------------------------------------------------------------
# phlippe's CIFAR ResNet and DenseNet

CIFAR = TensorSpec((3, 32, 32))


class ResNetBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, subsample: bool):
        super().__init__()
        self.net = nn.Sequential(*_conv_bn(c_in, c_out, 2 if subsample else 1), nn.ReLU(),
                                 *_conv_bn(c_out, c_out))
        self.downsample = nn.Conv2d(c_in, c_out, 1, stride=2) if subsample else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skip = self.downsample(x) if self.downsample is not None else x
        return F.relu(self.net(x) + skip)


class CifarNet(nn.Module):
    """input_net -> blocks -> output_net, convolutions initialised for ReLU."""

    def init_convs(self) -> None:
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.output_net(self.blocks(self.input_net(x)))


class CifarResNet(CifarNet):
    def __init__(self, classes: int = 10, blocks: tuple = (3, 3, 3), widths: tuple = (16, 32, 64)):
        super().__init__()
        self.input_net = nn.Sequential(*_conv_bn(3, widths[0]), nn.ReLU())
        layers, c_in = [], widths[0]
        for group, (count, c_out) in enumerate(zip(blocks, widths)):
            for i in range(count):
                # The first block of every group but the first halves the size.
                layers.append(ResNetBlock(c_in, c_out, subsample=(i == 0 and group > 0)))
                c_in = c_out
        self.blocks = nn.Sequential(*layers)
        self.output_net = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                        nn.Linear(c_in, classes))
        self.init_convs()


class DenseLayer(nn.Module):
    def __init__(self, c_in: int, bottleneck: int, growth: int):
        super().__init__()
        self.net = nn.Sequential(
            nn.BatchNorm2d(c_in), nn.ReLU(), nn.Conv2d(c_in, bottleneck * growth, 1, bias=False),
            nn.BatchNorm2d(bottleneck * growth), nn.ReLU(),
            nn.Conv2d(bottleneck * growth, growth, 3, padding=1, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.net(x), x], dim=1)


class CifarDenseNet(CifarNet):
    def __init__(self, classes: int = 10, layers: tuple = (6, 6, 6, 6), bottleneck: int = 2,
                 growth: int = 16):
        super().__init__()
        channels = growth * bottleneck
        self.input_net = nn.Conv2d(3, channels, 3, padding=1)
        blocks: list[nn.Module] = []
        for i, count in enumerate(layers):
            for _ in range(count):
                blocks.append(DenseLayer(channels, bottleneck, growth))
                channels += growth
            if i < len(layers) - 1:  # a transition halves channels and size
                blocks += [nn.BatchNorm2d(channels), nn.ReLU(),
                           nn.Conv2d(channels, channels // 2, 1, bias=False),
                           nn.AvgPool2d(2)]
                channels //= 2
        self.blocks = nn.Sequential(*blocks)
        self.output_net = nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU(),
                                        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                        nn.Linear(channels, classes))
        self.init_convs()


def phlippe_models() -> tuple[ModelSpec, ModelSpec]:
    resnet = ModelSpec("phlippe_resnet", "vision", CifarResNet, inputs=(CIFAR,))
    densenet = ModelSpec("phlippe_densenet", "vision", CifarDenseNet, inputs=(CIFAR,))
    return (
        replace(resnet, tiny=replace(resnet, build=partial(CifarResNet, blocks=(1, 1, 1),
                                                           widths=(4, 8, 8)))),
        replace(densenet, tiny=replace(densenet, build=partial(CifarDenseNet, layers=(1, 1),
                                                               growth=4))),
    )
