package tools

// All returns the 17 tools in DESIGN.md's order. Each call builds fresh
// values; callers may keep and share the slice.
func All() []Tool {
	return []Tool{
		sendPayment(),
		payAgent(),
		scanPayments(),
		getBalance(),
		createInvoice(),
		checkInvoices(),
		resolveName(),
		registerName(),
		getAgentInfo(),
		withdraw(),
		withdrawAll(),
		privacyCheck(),
		fundWallet(),
		schedulePayment(),
		listSchedules(),
		manageSchedule(),
		saveMemory(),
	}
}

// ByName finds a tool.
func ByName(name string) (Tool, bool) {
	for _, t := range All() {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}
