"""Replace attributes for a while and put every one back: the one patch-and-restore helper.

    with Patches() as patches:
        patches.wrap(torch.Tensor, "backward", lambda original: my_backward)   # wrapper(original)
        patches.set(module, "TIMEOUT", 20)
    # everything restored, in reverse order, even when the block raised

Used by the doctor's probes (global hooks around an unmodified script) and the checks that
observe a learner's script from outside.
"""

from contextlib import ExitStack


class Patches:
    def __init__(self):
        self._stack = ExitStack()

    def set(self, owner, name, value):
        original = getattr(owner, name)
        setattr(owner, name, value)
        self._stack.callback(setattr, owner, name, original)
        return original

    def wrap(self, owner, name, wrapper):
        """owner.name = wrapper(owner.name) until restored."""
        return self.set(owner, name, wrapper(getattr(owner, name)))

    def enter(self, context):
        """Enter a context manager now; exit it with the patches (in reverse order)."""
        return self._stack.enter_context(context)

    def callback(self, fn, *args):
        self._stack.callback(fn, *args)

    def restore(self):
        self._stack.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()
        return False
