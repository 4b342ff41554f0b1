"""``python -m webhooks``: the same command as ``placement-webhooks``."""

from webhooks.cli import main

if __name__ == "__main__":
    main()
