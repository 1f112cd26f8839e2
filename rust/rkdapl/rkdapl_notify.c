// SPDX-License-Identifier: GPL-2.0
/*
 * Consumer unload: a module notifier tells rkdapl when a module goes away, so that objects a
 * consumer left open (on purpose or after a failed init) are torn down instead of keeping a
 * device, DMA mappings and memory for good. The work is rkdapl_owner_gone() (Rust,
 * abi/consumer.rs and abi/removal.rs); objects are matched by the owner name rkdapl_ia_open() recorded.
 */
#include <linux/module.h>
#include <linux/notifier.h>

/* Rust (abi/consumer.rs); not part of the consumer API. */
void rkdapl_owner_gone(const char *name);
int rkdapl_module_notifier_register(void);
void rkdapl_module_notifier_unregister(void);

static int rkdapl_module_event(struct notifier_block *nb, unsigned long action, void *data)
{
	struct module *mod = data;

	/* After the module's exit function (or its failed init): nothing of it runs any more. */
	if (action == MODULE_STATE_GOING)
		rkdapl_owner_gone(mod->name);
	return NOTIFY_DONE;
}

static struct notifier_block rkdapl_module_nb = {
	.notifier_call = rkdapl_module_event,
};

int rkdapl_module_notifier_register(void)
{
	return register_module_notifier(&rkdapl_module_nb);
}

void rkdapl_module_notifier_unregister(void)
{
	unregister_module_notifier(&rkdapl_module_nb);
}
