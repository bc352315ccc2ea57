"""The op categories as traits: what a pass, the emitter or the interpreter may assume of an op
without knowing its class. Each op declares its category once, in its `traits`; the category tuples
(`fkl.CHANNELWISE_OPS`, ...) are read from the dialect's ops, so a new op (or a user op) joins them by
declaring the trait."""

from __future__ import annotations

from xdsl.traits import OpTrait


class ChannelWise(OpTrait):
    """Each channel of an output pixel is a function of the same channel of the input pixel (and of the
    op's values): a chain of these fuses element by element, in any layout."""


class PixelWise(OpTrait):
    """An output pixel is a function of the whole input pixel (the op mixes, drops, adds or reorders
    channels): a chain with one computes pixel by pixel."""


class Geometry(OpTrait):
    """The op changes which source pixels an output pixel reads: fkl-backward-fusion folds it into the
    read's sample region, and the emitter turns it into sampling code."""


class Memory(OpTrait):
    """The op reads or writes a buffer: the two ends of a chain."""


class Join(OpTrait):
    """The op joins two branches of a DAG (SPEC §8): each output pixel is a function of the pixels at the
    same place of two (or three) images of one shape. A kernel with one is a graph, not a chain."""
