#include "io/TextFile.h"

#include "core/Error.h"

#include <QSaveFile>

namespace hyperstream {

void saveFileAtomically(const std::string& path, const QByteArray& content,
                        const std::string& parameter) {
  QSaveFile file(QString::fromStdString(path));
  if (!file.open(QIODevice::WriteOnly) || file.write(content) != content.size() || !file.commit())
    throw Error(parameter, "cannot write '" + path + "': " + file.errorString().toStdString());
}

}  // namespace hyperstream
