"""pezo.hw: Amaranth 0.5 components, one module per golden twin (``rng``, ``engine``, ``host``)."""
