"""The bottom layer: one shape for every argument error (``<name> must be <what>, got <name>=<value>`` + the fix).

Every other layer validates through :mod:`pystratum.base._validation`; it imports nothing of pystratum.
"""
