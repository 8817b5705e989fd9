#ifndef CLIBXML2_SHIM_H
#define CLIBXML2_SHIM_H

#include <libxml/xmlversion.h>
/* libxml2's headers would pull in the system ICU, which clashes with the ICU that Foundation
   ships. Nothing here touches the ICU fields of xmlCharEncodingHandler, so hide them. */
#undef LIBXML_ICU_ENABLED
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlschemas.h>
#include <libxml/tree.h>

/// xmlFree is a global function pointer, which Swift cannot call directly.
static inline void clibxml2_free(void *pointer) { xmlFree(pointer); }

/// Absolute byte offset of the parser's cursor in the whole input.
static inline long clibxml2_cursor_offset(xmlParserCtxtPtr ctxt) {
    if (ctxt == NULL || ctxt->input == NULL) return -1;
    return (long)ctxt->input->consumed + (long)(ctxt->input->cur - ctxt->input->base);
}

#endif
