"""One SQL core over two dialects (layer: storage).

The slices of the store that read and write the same rows with the same statements on
SQLite and PostgreSQL live here once, written over a :class:`~.dialect.Dialect`; each
backend keeps only what really differs (connections and the writer model, full-text
ranking, vector search, scrubbing, migrations).

A statement is written with ``?`` placeholders; the dialect turns it into its driver's
form. A dialect must provide:

- ``q(sql)``: the statement in its driver's placeholder style (``?`` or ``%s``);
- ``rowid``: the column that orders rows by insertion (``rowid``, ``seq``);
- ``any(column, values)``: a membership test and its parameters (``IN (?, …)`` over
  chunks of values, or ``= ANY(?)`` over one array), and ``chunks(values)`` to match;
- ``upsert(…)`` and ``insert_ignore(…)``: its spelling of insert-or-replace and
  insert-or-skip;
- ``json(expr)`` / ``jsonb``: a JSON column read as text, a JSON parameter written;
  ``json_array_length``; ``nocase(expr)`` (case-blind order) and ``bytewise(expr)``
  (byte order of text); ``flag(value)`` (a boolean parameter); ``same`` (NULL-safe
  equality); ``many(conn, sql, rows)`` (a statement over many rows).

A backend mixes the slices it shares into its store and provides the hooks of
:class:`~.core.SQLCore` (``_reading``, ``_tx``, ``dialect``).
"""
