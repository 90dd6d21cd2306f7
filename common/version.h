// SPDX-License-Identifier: Apache-2.0
/* The release, as helm/trainscope/Chart.yaml's appVersion (scripts/lint.sh checks they agree). */
#ifndef TS_VERSION_H
#define TS_VERSION_H

#define TS_VERSION "0.1.0"

#endif
