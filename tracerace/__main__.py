"""``python -m tracerace``: the same command line as the ``tracerace`` script."""

from .cli import main

if __name__ == "__main__":
    main()
