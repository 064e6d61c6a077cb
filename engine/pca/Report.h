#pragma once
// The statistics report of a PCA run: JSON (everything needed to apply the same transform to
// another image) and CSV (one row per component).

#include "pca/PcaJob.h"

#include <QJsonObject>

#include <string>

namespace hyperstream {

// Writes `content` to a temporary file beside `path` and renames it over `path` when complete;
// throws Error(parameter) on failure.
void saveFileAtomically(const std::string& path, const QByteArray& content,
                        const std::string& parameter);

QJsonObject statsJson(const PcaResult& result, const PcaOptions& options);
// Both write atomically (temporary file, renamed when complete); throw Error on failure.
void writeStatsJson(const PcaResult& result, const PcaOptions& options, const std::string& path);
void writeTableCsv(const PcaResult& result, const std::string& path);

}  // namespace hyperstream
