"""The transport-free core: review model, plugin contract, chain, patches and config."""
