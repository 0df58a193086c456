"""Running Python a model wrote, contained: the tool, its supervisor process and the resources it uses."""
