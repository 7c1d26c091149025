"""What the pyopencl hosts of the corpus share: a context, a queue and the
program built from ``NAME.cl`` beside this file."""

import os

import pyopencl as cl


def build(name: str):
    """(context, queue, program) for ``NAME.cl``."""
    context = cl.create_some_context(interactive=False)
    queue = cl.CommandQueue(context)
    with open(os.path.join(os.path.dirname(__file__), f"{name}.cl")) as f:
        source = f.read()
    # No binary cache: Oclgrind may add build options (--build-options) that
    # pyopencl does not know about, so a cached binary could be another form.
    program = cl.Program(context, source).build(cache_dir=False)
    return context, queue, program
