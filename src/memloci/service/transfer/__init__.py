"""Export and import of a namespace as JSON Lines (layer: service).

:mod:`.jsonl` writes and reads the file; :mod:`.parse` and :mod:`.checks` read and check
an import's lines before anything is written; :mod:`.records` and :mod:`.entities` write
the records beside the memories; :mod:`.copies` gives a namespace its own ids for records
copied from another (imports and migrations); :mod:`.report` says what an import wrote.
"""

from memloci.service.transfer.jsonl import (
    Progress,
    array_lines,
    export_lines,
    import_lines,
    read_lines,
    write_lines,
)
from memloci.service.transfer.parse import FORMAT, VERSION
from memloci.service.transfer.report import ImportReport

__all__ = [
    "FORMAT",
    "VERSION",
    "ImportReport",
    "Progress",
    "array_lines",
    "export_lines",
    "import_lines",
    "read_lines",
    "write_lines",
]
