package history_test

import (
	"testing"

	"github.com/paydispatch/paydispatch/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
