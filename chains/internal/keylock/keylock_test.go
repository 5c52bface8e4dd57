package keylock

import (
	"sync"
	"testing"
)

func TestSerialisesPerKeyAndForgets(t *testing.T) {
	var l Locks
	var wg sync.WaitGroup
	inside := map[string]int{}
	var mu sync.Mutex
	for i := 0; i < 64; i++ {
		key := []string{"a", "b"}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			unlock := l.Lock(key)
			mu.Lock()
			inside[key]++
			if inside[key] != 1 {
				t.Errorf("two holders of %s", key)
			}
			mu.Unlock()
			mu.Lock()
			inside[key]--
			mu.Unlock()
			unlock()
		}()
	}
	wg.Wait()
	if n := l.Len(); n != 0 {
		t.Fatalf("%d keys remembered after every unlock", n)
	}
}
