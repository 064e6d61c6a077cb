#pragma once
// The command line's character set (its own processes only; the QGIS plugin leaves its host's
// locale alone).

#include <langinfo.h>

#include <clocale>
#include <cstdlib>
#include <cstring>

namespace hyperstream {

// Qt 6 warns on stderr, four lines at every start, when the locale's character set is not UTF-8
// (the bare "C" locale of cron jobs, containers and chroots), then uses C.UTF-8 anyway: asking
// for C.UTF-8 from the start keeps every message one line. LC_ALL, a user's explicit choice, is
// kept. Called before QCoreApplication and any thread.
inline void preferUtf8Locale() {
  const char* all = std::getenv("LC_ALL");
  if (all && *all) return;
  std::setlocale(LC_CTYPE, "");
  const char* codeset = nl_langinfo(CODESET);
  if (codeset && std::strcmp(codeset, "UTF-8") != 0) setenv("LC_CTYPE", "C.UTF-8", 1);
  std::setlocale(LC_CTYPE, "C");
}

}  // namespace hyperstream
