"""The ``handoffs`` command: one module per subcommand, the options they share declared once."""
