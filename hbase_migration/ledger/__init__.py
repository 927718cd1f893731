"""The run ledger: every run's figures in SQL (`store`), and where it lives (`location`). Imports nothing else of
the library, so every room above can record in it."""
