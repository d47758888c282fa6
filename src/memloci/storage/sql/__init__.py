"""One SQL core over two dialects (layer: storage).

The slices of the store that read and write the same rows with the same statements on
SQLite and PostgreSQL live here once, written over a :class:`~.dialect.Dialect`:
memories, versions and edges (:mod:`.nodes`), users, threads, entities and API keys
(:mod:`.records`), paged lists (:mod:`.paging`), consolidation rows
(:mod:`.consolidation`), knowledge rows (:mod:`.knowledge`), the embedding queue and key
search (:mod:`.search`), walks (:mod:`.walks`), the chain a turn joins (:mod:`.chains`),
privacy reads (:mod:`.privacy`) and the inventory a copy reads (:mod:`.inventory`).
Each backend keeps only what really differs: connections and the writer model, full
text, vectors, scrubbing and migrations, plus the few reads whose plans it tunes.

A statement is written with ``?`` placeholders (and no other ``?``). A dialect must
provide, as data (one table in :mod:`.dialect`, SQLite beside PostgreSQL):

- ``ph`` and ``q(sql)``: its driver's placeholder, and a statement in that style;
- ``rowid``: the column that orders rows by insertion (``rowid``, ``seq``), and
  ``rowid_key``: whether it addresses a row more cheaply than its ``id``;
- ``arrays``: membership over one array parameter (``= ANY(?)``) or ``IN (?, …)``
  lists over chunks; ``any(column, values)`` and ``chunks(values)`` follow it;
- ``jsonb`` (a JSON parameter), ``json(expr)`` (a JSON column read as text),
  ``json_array_length``; ``same`` (NULL-safe equality); ``like`` / ``ilike``;
- ``upsert(…)`` / ``insert_ignore(…)``: insert-or-replace and insert-or-skip;
- ``row_locks`` (``FOR UPDATE`` on rows a write reads first), ``offset`` (skip rows
  without a limit), ``nocase(expr)``, ``bytewise(expr)``, ``bytes_range(expr)``;
- plan hints that are no-ops elsewhere: ``unindexed(expr)``, ``join_first``,
  ``indexed_by(index)``, ``by_ids(alias, ids)``; and ``many(conn, sql, rows)``.

A backend is composed, not mixed: its database object (a
:class:`~.core.SQLDatabase`: ``dialect``, ``reading()``, ``tx()``, ``xlock()``, …)
owns the connections, and each slice is an object given it (:class:`~.core.SQLSlice`),
subclassed once by the backend only for the ``NotImplementedError`` hooks it fills in;
:class:`~.store.SQLStore` puts them together.
"""
