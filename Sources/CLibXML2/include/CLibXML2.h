#ifndef CLIBXML2_H
#define CLIBXML2_H

#include <libxml/HTMLparser.h>
#include <libxml/parser.h>
#include <libxml/tree.h>

// libxml2, opened on first use (hh_xml_load) rather than when the process starts, and the
// few functions the script libraries call, through pointers bound then (the project's
// build, else Debian's, which brings ICU): loaded at every start, it cost each process (the
// supervisor and every worker) time and memory that only a script reading HTML or XML needs.
// The types and constants are libxml2's own, from its headers.

/// Loads libxml2 and initialises its parser, once; later calls return the first call's
/// result. NULL on success, else why libxml2 is not usable (a static string or dlerror()'s,
/// valid for the life of the process). Call it before any function below.
const char *hh_xml_load(void);

htmlDocPtr hh_html_read_memory(const char *buffer, int size, int options);
xmlParserCtxtPtr hh_xml_new_parser_context(void);
void hh_xml_free_parser_context(xmlParserCtxtPtr context);
xmlDocPtr hh_xml_context_read_memory(xmlParserCtxtPtr context, const char *buffer, int size, int options);
const xmlError *hh_xml_context_last_error(xmlParserCtxtPtr context);
xmlNodePtr hh_xml_root_element(xmlDocPtr document);
void hh_xml_free_document(xmlDocPtr document);

#endif
