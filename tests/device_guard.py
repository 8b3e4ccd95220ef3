"""A CPU stand-in for a GPU that catches device mix-ups: :class:`VirtualDevice`.

Inside ``with VirtualDevice() as dev:`` the tensors passed through ``dev.place(...)`` (and every tensor
computed from them) count as living on a virtual accelerator, ``cuda:0``, while their data stays on the
CPU, so the code under test runs for real (``.item()``, ``nonzero``, boolean masks, Python loops over
data: everything the ``meta`` device cannot run).  A ``torch.overrides.TorchFunctionMode`` sees every
torch call and

* answers ``.device`` / ``.is_cuda`` / ``.get_device()`` of a placed tensor as a CUDA tensor would, so
  ``torch.zeros(..., device=x.device)`` and ``y.to(x.device)`` place their results too (the mode runs
  them on the CPU and tags them);
* raises :class:`DeviceMixError` for any call that mixes a placed tensor with a CPU tensor of one or
  more dimensions -- a CPU tensor from ``torch.arange(n)``, ``torch.zeros(...)``, ``torch.tensor([...])``
  or ``torch.from_numpy`` without ``device=``, an index built on the CPU, a module weight never moved --
  and for ``.numpy()`` of a placed tensor.  0-dim CPU tensors mix freely (PyTorch moves CPU scalars).

It is stricter than CUDA in one place: CUDA accepts CPU index tensors in ``x[idx]`` and ``x[idx] = y``
(with a hidden host-to-device copy and synchronisation); here they are an error too.  A CPU value in a
plain slice assignment ``x[a:b] = cpu_tensor`` is a cross-device ``copy_`` and allowed, as on CUDA.
Kernel dispatch on ``is_cuda`` sees a CUDA tensor, so run the code under test with
``TRUSTMASS_KERNELS=torch`` (the PyTorch twins).  Devices other than ``cuda`` and ``cpu`` (``meta``,
on which transformers builds a model before loading its weights) pass through untouched.

What it cannot see: arithmetic that differs on a real GPU (reduction order, Triton's tiles), kernels
other than the twins, and CUDA-only code paths (``torch.cuda.*`` calls are not torch functions).
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

VIRTUAL = torch.device("cuda", 0)
_TAG = "_virtual_device"
_MOVES = {torch.Tensor.to, torch.Tensor.cuda, torch.Tensor.cpu, torch.Tensor.copy_, torch.Tensor.new_tensor}
_GETTERS = {torch.Tensor.device.__get__, torch.Tensor.is_cuda.__get__, torch.Tensor.is_cpu.__get__}


class DeviceMixError(RuntimeError):
    """A torch call mixed the virtual accelerator's tensors with CPU tensors."""


def is_placed(t) -> bool:
    return isinstance(t, torch.Tensor) and getattr(t, _TAG, False)


def _tensors(x, out: list) -> list:
    if isinstance(x, torch.Tensor):
        out.append(x)
    elif isinstance(x, (list, tuple)):
        for y in x:
            _tensors(y, out)
    elif isinstance(x, dict):
        for y in x.values():
            _tensors(y, out)
    return out


def _is_virtual_device(d) -> bool | None:
    """True for a CUDA device (the virtual one), False for the CPU, None for anything else (``meta``
    included: transformers builds models on it, and the mode leaves such calls alone)."""
    if isinstance(d, str):
        try:
            d = torch.device(d)
        except RuntimeError:  # a string that names no device (a memory format's, a dtype's)
            return None
    if isinstance(d, torch.device):
        return {"cuda": True, "cpu": False}.get(d.type)
    return None


def _name(func) -> str:
    return getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)


class VirtualDevice(TorchFunctionMode):
    """The mode (module docstring).  ``calls`` counts the torch calls it saw on placed tensors."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    # -- placing inputs --------------------------------------------------------------------------
    @staticmethod
    def place(x):
        """Tag a tensor (or every tensor of a list / tuple / dict, or every parameter and buffer of a
        module) as living on the virtual accelerator; returns ``x``."""
        if isinstance(x, torch.nn.Module):
            for t in list(x.parameters()) + list(x.buffers()):
                setattr(t, _TAG, True)
        else:
            for t in _tensors(x, []):
                setattr(t, _TAG, True)
        return x

    # -- the mode --------------------------------------------------------------------------------
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _GETTERS:
            return self._getter(func, args[0])
        if func is torch.Tensor.get_device and is_placed(args[0]):
            return 0
        inputs = _tensors(args, []) + _tensors(kwargs, [])
        placed = [t for t in inputs if is_placed(t)]
        if placed:
            self.calls += 1
        if func in (torch.Tensor.numpy, torch.Tensor.__array__) and placed:
            raise DeviceMixError(
                f"{_name(func)} of a tensor on {VIRTUAL}: a CUDA tensor has no numpy view (move it with .cpu() first)"
            )
        target = self._target(func, args, kwargs)
        if target is None and func not in _MOVES:
            cpu = [t for t in inputs if not is_placed(t) and t.dim() > 0]
            if func is torch.Tensor.__setitem__ and not _tensors(
                args[1], []
            ):  # x[1:, :2] = cpu: a copy_, as CUDA allows
                cpu = [t for t in cpu if t is not args[2]]
            if placed and cpu:
                shapes = ", ".join(f"{tuple(t.shape)} {t.dtype}" for t in cpu[:3])
                raise DeviceMixError(f"{_name(func)} mixes tensors on {VIRTUAL} with CPU tensors ({shapes})")
        if target:  # the virtual accelerator's data lives on the CPU
            if "device" in kwargs:
                kwargs["device"] = "cpu"
            elif func in (torch.Tensor.to, torch.Tensor.cuda):  # t.to(device, ...), t.cuda()
                args = args[:1] + tuple("cpu" if _is_virtual_device(a) else a for a in args[1:])
                if func is torch.Tensor.cuda:
                    func, args = torch.Tensor.to, args[:1] + ("cpu",)
        result = func(*args, **kwargs)
        if func is torch.Tensor.copy_:  # copy_ keeps its destination's device
            return result
        virtual = target if target is not None else (func is not torch.Tensor.cpu and bool(placed))
        if func is torch.Tensor.to:
            other = [a for a in args[1:] if isinstance(a, torch.Tensor)]
            if other:
                virtual = is_placed(other[0])
        return self._tag(result, virtual, inputs)

    def _getter(self, func, t):
        if not is_placed(t):
            return func(t)
        if func == torch.Tensor.device.__get__:  # method-wrappers compare equal, never identical
            return VIRTUAL
        return func == torch.Tensor.is_cuda.__get__

    @staticmethod
    def _target(func, args, kwargs) -> bool | None:
        """Where an explicit device argument sends the result: True (virtual), False (CPU), None (none given)."""
        if "device" in kwargs and kwargs["device"] is not None:
            return _is_virtual_device(kwargs["device"])
        if func in (torch.Tensor.to, torch.Tensor.cuda):
            for a in args[1:]:
                where = _is_virtual_device(a)
                if where is not None:
                    return where
            if func is torch.Tensor.cuda:
                return True
        return None

    @staticmethod
    def _tag(result, virtual: bool, inputs):
        def one(t):
            if not isinstance(t, torch.Tensor):
                return t
            if any(t is x for x in inputs) and is_placed(t) != virtual:
                t = t.clone()  # a move returns a copy on the other device, never the input itself
            if virtual:
                setattr(t, _TAG, True)
            elif is_placed(t):
                setattr(t, _TAG, False)
            return t

        if isinstance(result, torch.Tensor):
            return one(result)
        if isinstance(result, list):
            return [one(t) for t in result]
        if isinstance(result, tuple) and not hasattr(result, "_fields") and type(result) is tuple:
            return tuple(one(t) for t in result)
        if isinstance(result, tuple):  # torch.return_types (values, indices) and named tuples: tag in place
            for t in result:
                one(t)
        return result
