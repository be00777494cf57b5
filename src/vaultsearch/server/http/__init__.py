"""HTTP: the REST API, the page (``vaultsearch serve``) and the guards in front of both."""
