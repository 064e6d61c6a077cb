#pragma once
// Small text outputs (reports, CSV tables) written whole or not at all.

#include <QByteArray>

#include <string>

namespace hyperstream {

// Writes `content` to a temporary file beside `path` and renames it over `path`; throws
// Error(parameter) when it cannot.
void saveFileAtomically(const std::string& path, const QByteArray& content,
                        const std::string& parameter);

}  // namespace hyperstream
