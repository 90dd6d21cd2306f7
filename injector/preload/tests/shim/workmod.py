calls = 0


def train_step():
    global calls
    calls += 1
