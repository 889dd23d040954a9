/*
 * What guest/agent.c (the one with main(), not linked into the agent's
 * fuzz targets) gives the rest of the agent. Weak, so a target may give
 * its own.
 */
#include <stdlib.h>

#include "agent.h"

__attribute__((weak)) int		 agent_pid1;
__attribute__((weak)) int		 agent_template;
__attribute__((weak)) int		 agent_service;
__attribute__((weak)) struct agent_config agent_cfg;
__attribute__((weak)) char		*agent_error;
__attribute__((weak)) long long		 agent_ready_ms;
__attribute__((weak)) char		 agent_kernel[65];

/* The error is the caller's to report; the target only needs it kept. */
__attribute__((weak)) void
agent_set_error(const char *fmt, ...)
{
	(void)fmt;
}

/* A parser never powers the guest off. */
__attribute__((weak)) void
agent_poweroff_request(void)
{
	abort();
}
