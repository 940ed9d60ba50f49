"""The bottom layer: one shape for every argument error (``<name> must be <what>, got <name>=<value>`` + the fix), one guard for optional imports.

Every other layer validates through :mod:`pystratum.base._validation`; it imports nothing of pystratum.
"""
