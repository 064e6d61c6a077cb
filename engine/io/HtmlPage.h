#pragma once
// What every HTML report shares: the page around it and its summary table's rows.

#include <QString>

namespace hyperstream::html {

// The doctype, the head (title, the reports' style) and the opening body tag.
QString pageStart(const QString& title);
// A row of a summary table: the name as a header cell, the value escaped.
QString row(const QString& name, const QString& value);
// The version line and the closing tags.
QString pageEnd();

}  // namespace hyperstream::html
