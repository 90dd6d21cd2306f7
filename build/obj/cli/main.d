build/obj/cli/main.o: cli/main.c cli/cli.h common/log.h
cli/cli.h:
common/log.h:
