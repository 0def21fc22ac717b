#include <libxml/HTMLparser.h>
#include <libxml/xpath.h>
#include <stdio.h>
int main(int argc, char **argv) {
    htmlDocPtr doc = htmlReadFile(argv[1], "utf-8", HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET);
    if (!doc) { printf("no doc\n"); return 1; }
    xmlXPathContextPtr ctx = xmlXPathNewContext(doc);
    xmlXPathObjectPtr forms = xmlXPathEvalExpression((xmlChar *)"//form", ctx);
    int n = forms->nodesetval ? forms->nodesetval->nodeNr : 0;
    printf("forms: %d\n", n);
    for (int i = 0; i < n; i++) {
        xmlNodePtr f = forms->nodesetval->nodeTab[i];
        printf("action=%s\n", xmlGetProp(f, (xmlChar *)"action"));
        ctx->node = f;
        xmlXPathObjectPtr inputs = xmlXPathEvalExpression((xmlChar *)".//input", ctx);
        for (int j = 0; inputs->nodesetval && j < inputs->nodesetval->nodeNr; j++) {
            xmlNodePtr in = inputs->nodesetval->nodeTab[j];
            printf("  input name=%s value=%s checked=%s\n", xmlGetProp(in, (xmlChar *)"name"), xmlGetProp(in, (xmlChar *)"value"), xmlGetProp(in, (xmlChar *)"checked"));
        }
    }
    return 0;
}
