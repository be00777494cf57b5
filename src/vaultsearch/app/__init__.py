"""The application layer: the ``Vault`` facade and the read-side services (browsing,
listing, navigation, reading sources, answers) that every front door calls."""
