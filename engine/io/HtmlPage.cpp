#include "io/HtmlPage.h"

namespace hyperstream::html {

QString pageStart(const QString& title) {
  return "<!DOCTYPE html><html><head><meta charset='utf-8'><title>" + title.toHtmlEscaped() +
         "</title><style>body{font-family:sans-serif;margin:1.5em;max-width:60em}"
         "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;"
         "text-align:right}th{background:#eee}</style></head><body>";
}

QString row(const QString& name, const QString& value) {
  return QString("<tr><th style='text-align:left'>%1</th><td style='text-align:left'>%2</td></tr>")
      .arg(name, value.toHtmlEscaped());
}

QString pageEnd() {
  return "<p>Hyperstream " HYPERSTREAM_VERSION "</p></body></html>\n";
}

}  // namespace hyperstream::html
