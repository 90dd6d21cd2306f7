# SPDX-License-Identifier: Apache-2.0
"""TEST DOUBLE of DeepSpeed: an engine whose step() takes the optimizer's step at each
gradient accumulation boundary, or skips it on an fp16 overflow."""
