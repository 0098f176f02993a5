"""HTTP edge shared by every feature: base Structs, names, time and paging."""
