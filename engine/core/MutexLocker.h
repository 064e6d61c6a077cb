#pragma once
// QMutexLocker by one name in Qt 5 and Qt 6 (where it is a template over the mutex type), for the
// places that name the type: a lock held in an optional or a pointer.

#include <QMutex>
#include <QMutexLocker>

namespace hyperstream {

#if QT_VERSION >= QT_VERSION_CHECK(6, 0, 0)
using MutexLocker = QMutexLocker<QMutex>;
#else
using MutexLocker = QMutexLocker;
#endif

}  // namespace hyperstream
