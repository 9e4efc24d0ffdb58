"""Keys and encryption: the wrapped data key and the keyed vector rotation."""
