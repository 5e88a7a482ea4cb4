package launcher

// HeldImages is how many digests l holds from PruneImages for Syncs and
// Plans under way, for the tests of package launcher_test.
func HeldImages(l *Launcher) int {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	return len(l.heldImages)
}

// Plans is how many plans l has made (each Sync and Plan makes one).
func Plans(l *Launcher) uint64 { return l.plans.Load() }

// Readings is how many times l has read a domain's state and live XML for
// its status.
func Readings(l *Launcher) uint64 { return l.readings.Load() }
