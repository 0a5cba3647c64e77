/* A shared library without the entry symbol. */
__attribute__((visibility("default"))) int not_the_entry_symbol(void) { return 1; }
