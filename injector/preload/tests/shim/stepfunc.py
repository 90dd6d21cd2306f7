# SPDX-License-Identifier: Apache-2.0
"""Steps from TRAINSCOPE_STEP_FUNC=workmod@@train_step, without torch."""
import workmod

for _ in range(3):
    workmod.train_step()
print(workmod.calls)
