import './base.css';
import './proposals.css';
import './experience.css';
import './preferences.css';
import './context.css';
import './models.css';
import './results.css';
import './status.css';
