build/obj/cli/run.o: cli/run.c cli/cli.h
cli/cli.h:
