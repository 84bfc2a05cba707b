"""The persistence floor: the state store's handle (``handle``), and the registry of
components that keep tables in it, each with its numbered migrations
(``components``). It knows what a table and a migration are, nothing of what a
component keeps."""
