#ifndef TS_CLI_H
#define TS_CLI_H

int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_timeline(int argc, char **argv);

#endif
