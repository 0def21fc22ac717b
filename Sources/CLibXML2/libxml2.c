#include "CLibXML2.h"

#include <CLibraryLoading.h>
#include <dlfcn.h>
#include <pthread.h>

static struct {
    void (*init_parser)(void);
    htmlDocPtr (*html_read_memory)(const char *buffer, int size, const char *url, const char *encoding, int options);
    xmlParserCtxtPtr (*new_parser_context)(void);
    void (*free_parser_context)(xmlParserCtxtPtr context);
    xmlDocPtr (*context_read_memory)(xmlParserCtxtPtr context, const char *buffer, int size, const char *url,
                                     const char *encoding, int options);
    const xmlError *(*context_last_error)(void *context);
    xmlNodePtr (*root_element)(const xmlDoc *document);
    void (*free_document)(xmlDocPtr document);
} xml;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static const char *load_failure;

static void load(void) {
    void *library = hh_open_library("libxml2.so.2");
    if (!library) {
        load_failure = dlerror();
        return;
    }
    const hh_symbol symbols[] = {
        {"xmlInitParser", (void **)&xml.init_parser},
        {"htmlReadMemory", (void **)&xml.html_read_memory},
        {"xmlNewParserCtxt", (void **)&xml.new_parser_context},
        {"xmlFreeParserCtxt", (void **)&xml.free_parser_context},
        {"xmlCtxtReadMemory", (void **)&xml.context_read_memory},
        {"xmlCtxtGetLastError", (void **)&xml.context_last_error},
        {"xmlDocGetRootElement", (void **)&xml.root_element},
        {"xmlFreeDoc", (void **)&xml.free_document},
    };
    static char failure[128];
    if ((load_failure = hh_bind_symbols(library, "libxml2.so.2", symbols, sizeof symbols / sizeof *symbols, failure, sizeof failure)))
        return;
    // Once, before any thread parses: libxml2 asks for it in threaded programs.
    xml.init_parser();
}

const char *hh_xml_load(void) {
    pthread_once(&load_once, load);
    return load_failure;
}

htmlDocPtr hh_html_read_memory(const char *buffer, int size, int options) {
    // No encoding given: the parser honours the page's `<meta charset>`.
    return xml.html_read_memory(buffer, size, NULL, NULL, options);
}

xmlParserCtxtPtr hh_xml_new_parser_context(void) { return xml.new_parser_context(); }
void hh_xml_free_parser_context(xmlParserCtxtPtr context) { xml.free_parser_context(context); }

xmlDocPtr hh_xml_context_read_memory(xmlParserCtxtPtr context, const char *buffer, int size, int options) {
    return xml.context_read_memory(context, buffer, size, NULL, NULL, options);
}

const xmlError *hh_xml_context_last_error(xmlParserCtxtPtr context) { return xml.context_last_error(context); }
xmlNodePtr hh_xml_root_element(xmlDocPtr document) { return xml.root_element(document); }
void hh_xml_free_document(xmlDocPtr document) { xml.free_document(document); }
