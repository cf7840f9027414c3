/* empty.c — keeps a library that may have no sources of its own buildable. */
typedef int cairn_empty_translation_unit;
