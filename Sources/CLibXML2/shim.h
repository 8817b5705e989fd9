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

/// Whether libxml2's input window still begins at the first byte of the document.
static inline int clibxml2_input_starts_at_beginning(xmlParserCtxtPtr ctxt) {
    return ctxt != NULL && ctxt->input != NULL && ctxt->input->consumed == 0;
}

#endif
