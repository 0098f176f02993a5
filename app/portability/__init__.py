"""Moving in and out of Daybook: Memos Export Format 1.0 and Memos databases.

One module per concept:

- :mod:`.format`: the container's constants, names and timestamps (pure);
- :mod:`.entry_names`: the container rules for ZIP entry names (pure);
- :mod:`.records`: typed archive records, parsed from schema-valid JSON;
- :mod:`.schemas`: the vendored JSON Schemas and their validators;
- :mod:`.limits`: the bounds an archive must stay within;
- :mod:`.unzip`: streaming, bounded decompression of an untrusted archive;
- :mod:`.staging`: the on-disk scratch store a validated archive lives in;
- :mod:`.validation`: container and record validation into staging;
- :mod:`.plan`: the pure import decision per record, and the plan's counts;
- :mod:`.walk`, :mod:`.apply`, :mod:`.attach`: writing a validated archive through
  the memo services (the walk's state; records and relations; attachments);
- :mod:`.export`: streaming an archive out of a read snapshot;
- :mod:`.access`: who may export and import, for sessions and keys;
- :mod:`.routes`, :mod:`.cli`: the HTTP and command-line glue;
- :mod:`.memosdb`: reading a Memos database (0.22 to 0.31) and carrying it over.
"""
