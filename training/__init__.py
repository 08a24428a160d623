"""Ray Train entry points (updater SFT and GRPO, the validity scorer) and their DeepSpeed configs."""
