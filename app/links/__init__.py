"""Link previews (Memos' ``memos/-/linkMetadata``), fetched with a guarded client."""
