"""The command line, ``vaultsearch``: the parser and every subcommand in ``main``, the
browsing commands in ``browse``, sources in ``sources``, the Milvus store in ``milvus``."""

from vaultsearch.cli.main import main

__all__ = ["main"]
